// Header-only, the umbrella and nothing that uses it: compiled at -O2 and its symbols checked by
// build/umbrella_emits_nothing (issue 38: an empty `main` emitted 179 KB, every knob group's constructor
// and the tuning database's reader, from static registrations made in every file).
#include <cotune/cotune.hpp>

int main() { return 0; }
