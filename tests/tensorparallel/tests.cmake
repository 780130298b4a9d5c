# Tensor parallelism under mpirun (included by tests/CMakeLists.txt): lenet split over np = T = 2
# and 4 ranks by parallelize() trains as the whole model does in each process.
if(DTRAIN_MPI)
  add_executable(test_tensorparallel_mpi ${CMAKE_CURRENT_LIST_DIR}/mpi/tensor_parallel_mpi_test.cpp
                                         ${PROJECT_SOURCE_DIR}/tests/comm/mpi/mpi_main.cpp)
  target_link_libraries(test_tensorparallel_mpi PRIVATE dtrain GTest::gtest)
  foreach(np 2 4)
    add_test(NAME tensorparallel_mpi_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none -np ${np}
                     $<TARGET_FILE:test_tensorparallel_mpi>)
    set_tests_properties(tensorparallel_mpi_np${np} PROPERTIES LABELS "tensorparallel;mpi" TIMEOUT 180 RUN_SERIAL TRUE
                         ENVIRONMENT "OMPI_MCA_btl_vader_single_copy_mechanism=none")
  endforeach()
endif()
