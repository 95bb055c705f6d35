// The file the test programs' precompiled header is built with (tests/CMakeLists.txt, COTUNE_TEST_PCH).
