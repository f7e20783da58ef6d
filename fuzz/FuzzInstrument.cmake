# Compile flags of a fuzzing build (MEGATRON_ENABLE_FUZZERS=ON, or fuzz/
# configured on its own). Included before any target is defined, so that
# every library the harnesses link (the runtime's mtrt_core, the importer and
# the mt dialect) carries libFuzzer's coverage instrumentation and the
# sanitizers, not only the harnesses. Only libMLIR.so, the prebuilt LLVM
# package, stays uninstrumented.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "The fuzzers need clang's libFuzzer: configure with "
    "-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 "
    "(see scripts/fuzz.sh)")
endif()

set(MEGATRON_FUZZ_SANITIZERS "address,undefined" CACHE STRING
  "Sanitizers the fuzz build instruments everything with (comma-separated)")

# UBSan reports are made fatal so that libFuzzer records them as crashes.
add_compile_options(
  -fsanitize=fuzzer-no-link,${MEGATRON_FUZZ_SANITIZERS}
  -fno-sanitize-recover=all
  -fno-omit-frame-pointer
  -gline-tables-only
  # clang-22 on GCC 12's libstdc++ warns of every std::stable_sort.
  -Wno-deprecated-declarations)
add_link_options(-fsanitize=${MEGATRON_FUZZ_SANITIZERS})
