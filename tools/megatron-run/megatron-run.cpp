//===- megatron-run.cpp - Train with a compiled artifact ------------------===//
//
// Loads an artifact written by `megatron-translate --export-artifact`, binds
// parameters (from safetensors or the model's initializers), optimizer
// state, data and hyperparameters to its buffers, and runs training steps
// on a backend (--device). Flags follow Megatron-LM's names where it has
// one. The tool is the runtime's C API (mtrt/mtrt.h); the training run is
// runtime/src/train/.
//
//===----------------------------------------------------------------------===//

#include "mtrt/mtrt.h"

int main(int argc, char **argv) { return mtrt_main(argc, argv); }
