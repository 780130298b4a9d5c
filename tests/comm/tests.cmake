# MPI runs of the comm layer (included by tests/CMakeLists.txt). test_comm_mpi runs every
# algorithm against MPI_Allreduce under mpirun for 1..8 ranks (5..8 oversubscribe the cores);
# bench_comm is the benchmark driver, built but not run as a test.
if(DTRAIN_MPI)
  add_executable(test_comm_mpi ${CMAKE_CURRENT_LIST_DIR}/mpi/mpi_main.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/mpi/mpi_allreduce_test.cpp)
  target_link_libraries(test_comm_mpi PRIVATE dtrain GTest::gtest)
  target_include_directories(test_comm_mpi PRIVATE ${CMAKE_CURRENT_LIST_DIR})

  add_executable(bench_comm ${CMAKE_CURRENT_LIST_DIR}/bench/comm_bench.cpp)
  target_link_libraries(bench_comm PRIVATE dtrain)

  foreach(np RANGE 1 8)
    add_test(NAME comm_mpi_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none -np ${np}
                     $<TARGET_FILE:test_comm_mpi>)
    # Single-copy (CMA) needs ptrace rights that containers often lack; copy-in/copy-out works
    # everywhere. The runs share the machine's cores, so they never run side by side.
    set_tests_properties(comm_mpi_np${np} PROPERTIES
                         LABELS "comm;mpi" TIMEOUT 180 RUN_SERIAL TRUE
                         ENVIRONMENT "OMPI_MCA_btl_vader_single_copy_mechanism=none")
  endforeach()
endif()
