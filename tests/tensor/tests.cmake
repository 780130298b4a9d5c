# Kernel micro-benchmark (not a test: prints timings, asserts nothing). Built on request:
#   cmake --build BUILD --target bench_kernels && BUILD/tests/bench_kernels
add_executable(bench_kernels EXCLUDE_FROM_ALL ${CMAKE_CURRENT_LIST_DIR}/bench/bench_kernels.cpp)
target_link_libraries(bench_kernels PRIVATE dtrain)
