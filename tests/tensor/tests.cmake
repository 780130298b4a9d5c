# Kernel micro-benchmark (not a test: prints timings, asserts nothing). Built on request:
#   cmake --build BUILD --target bench_kernels && BUILD/tests/bench_kernels
add_executable(bench_kernels EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/bench/bench_kernels.cpp)
target_link_libraries(bench_kernels PRIVATE dtrain)

# The kernels and layouts again as oneDNN runs them on a CPU without AVX-512 (nChw8c blocking,
# jit:avx2 kernels), whatever this machine has.
add_test(NAME tensor_kernels_avx2
         COMMAND $<TARGET_FILE:test_tensor> --gtest_filter=Cpu*:Tensor.*)
set_tests_properties(tensor_kernels_avx2 PROPERTIES LABELS tensor ENVIRONMENT ONEDNN_MAX_CPU_ISA=AVX2)
