// The one file of cotune's separately compiled library (cotune::cotune_separate): every non-template
// body of the headers, compiled once. Built with COTUNE_SEPARATE_COMPILATION, as every file using it.
#include <cotune/impl/src.hpp>
