# End-to-end checkpoint tests (included by tests/CMakeLists.txt): test_checkpoint_cli runs the
# dtrain binary, alone and under mpirun, and SIGKILLs it; the tests time kills against the
# metrics log, so they run one at a time. The export test loads a dtrain export into PyTorch with
# Debian's python3 (it reports itself skipped where python3-torch is missing).
if(TARGET test_checkpoint)
  # The fuzz seeds must be valid files (tests read them).
  target_compile_definitions(test_checkpoint PRIVATE DTRAIN_FUZZ_CORPUS="${PROJECT_SOURCE_DIR}/fuzz/corpus")
  file(GLOB cli_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cli/*.cpp)
  add_executable(test_checkpoint_cli ${cli_sources})
  target_link_libraries(test_checkpoint_cli PRIVATE dtrain GTest::gtest GTest::gtest_main)
  target_include_directories(test_checkpoint_cli PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_dependencies(test_checkpoint_cli dtrain_cli)
  set(mpiexec "")
  if(DTRAIN_MPI)
    set(mpiexec ${MPIEXEC_EXECUTABLE})
  endif()
  target_compile_definitions(test_checkpoint_cli PRIVATE DTRAIN_BINARY="$<TARGET_FILE:dtrain_cli>"
                                                         DTRAIN_MPIEXEC="${mpiexec}")
  # One label each (gtest_discover_tests cannot set a list): ctest -L takes a regular expression,
  # so -L checkpoint selects all of them and -L mpi the runs under mpirun, like the comm layer's.
  gtest_discover_tests(test_checkpoint_cli DISCOVERY_TIMEOUT 60 TEST_FILTER "CheckpointCli.*"
                       PROPERTIES LABELS checkpoint-cli RUN_SERIAL TRUE TIMEOUT 600)
  gtest_discover_tests(test_checkpoint_cli DISCOVERY_TIMEOUT 60 TEST_FILTER "CheckpointMpi.*"
                       PROPERTIES LABELS checkpoint-mpi RUN_SERIAL TRUE TIMEOUT 600
                                  ENVIRONMENT "OMPI_MCA_btl_vader_single_copy_mechanism=none")

  find_program(DTRAIN_DEBIAN_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(DTRAIN_DEBIAN_PYTHON)
    add_test(NAME checkpoint_export_torch
             COMMAND ${DTRAIN_DEBIAN_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/export_torch_test.py $<TARGET_FILE:dtrain_cli>
                     ${PROJECT_SOURCE_DIR}/tools/reference_models.py)
    # Beside the other tests (it compares accuracies, not times): its 30 s ran alone, while the Slurm test held the
    # other slot. Its cost starts it right after the Slurm test (tests/slurm/tests.cmake), so it is no tail.
    set_tests_properties(checkpoint_export_torch PROPERTIES
                         LABELS "checkpoint;python" SKIP_RETURN_CODE 77 COST 0.0005 TIMEOUT 600)
  endif()
endif()
