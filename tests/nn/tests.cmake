# The PyTorch golden comparison again with oneDNN's AVX2 kernels (nChw8c blocking), whatever this
# machine has: their rounding differs from the AVX-512 kernels' (golden_test.cpp, kReluTieTol).
add_test(NAME nn_golden_avx2 COMMAND $<TARGET_FILE:test_nn> --gtest_filter=Models/Golden.*)
set_tests_properties(nn_golden_avx2 PROPERTIES LABELS nn ENVIRONMENT ONEDNN_MAX_CPU_ISA=AVX2)
