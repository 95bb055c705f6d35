// The DLPack module's part of cotune's separately compiled library (cotune::cotune_separate), built when
// the module is: the tensors' checks and messages, compiled once (see <cotune/impl/dlpack_src.hpp>).
#include <cotune/impl/dlpack_src.hpp>
