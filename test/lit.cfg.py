# -*- Python -*-
# lit configuration of the megatron-mlir regression tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "MEGATRON"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.megatron_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%megatron_src_root", config.megatron_src_root))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.megatron_tools_dir, config.llvm_tools_dir]
tools = ["megatron-opt", "megatron-translate", "megatron-run"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Debian's PyTorch (python3-torch) is the independent numerical reference. It
# installs for the system interpreter, which may not be the first python3 on
# the PATH.
import subprocess

python_torch = "/usr/bin/python3"
try:
    subprocess.run([python_torch, "-c", "import torch, numpy"], check=True,
                   capture_output=True, timeout=120)
    config.available_features.add("torch")
except (OSError, subprocess.SubprocessError):
    pass
# Before the default %python, which would otherwise match first.
config.substitutions.insert(0, ("%torch_python", python_torch))
config.substitutions.append(("%unittests_dir", os.path.join(config.megatron_obj_root, "unittests")))
# The runtime's C API (include/mtrt/mtrt.h) as a shared library.
config.substitutions.append(("%libmtrt", os.path.join(config.megatron_obj_root, "lib", "libmtrt.so")))

# The CUDA backend is built where the CUDA toolkit is; a GPU is there only
# where nvidia-smi lists one.
import subprocess
if getattr(config, "enable_cuda", False):
    config.available_features.add("cuda-backend")
try:
    if subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                      timeout=20).stdout.strip():
        config.available_features.add("cuda-device")
except (OSError, subprocess.SubprocessError):
    pass

# CPU ranks: OpenMPI's launcher. --allow-run-as-root because CI runs as root,
# --oversubscribe because tests start more ranks than the machine has cores.
import shutil

mpirun = shutil.which("mpirun")
if mpirun:
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", mpirun + " --allow-run-as-root --oversubscribe"))

# nvcc compiles the generated kernels as CUDA for sm_90a where the CUDA
# toolkit is installed (no GPU needed).
nvcc = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
if nvcc:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", nvcc))

# An x86-64 CPU with AVX2, on which OpenBLAS (Debian's, built for every
# x86 core type and choosing at load) has kernels faster than its
# Prescott ones: megatron-run names the slower choice.
import platform

try:
    with open("/proc/cpuinfo") as cpuinfo:
        cpu_flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                          if line.startswith("flags")), [])
except OSError:
    cpu_flags = []
if platform.machine() == "x86_64" and "avx2" in cpu_flags:
    config.available_features.add("x86-avx2")
