# Pipelines under mpirun (included by tests/CMakeLists.txt): test_pipeline_mpi runs every
# schedule and micro-batch count 1..8 over the MPI transport at np = K = 2..4, against the
# unsplit model in each process; the CLI cases need Fashion-MNIST.
if(DTRAIN_MPI)
  add_executable(test_pipeline_mpi ${CMAKE_CURRENT_LIST_DIR}/mpi/pipeline_mpi_test.cpp
                                   ${PROJECT_SOURCE_DIR}/tests/comm/mpi/mpi_main.cpp)
  target_link_libraries(test_pipeline_mpi PRIVATE dtrain GTest::gtest)
  foreach(np RANGE 2 4)
    add_test(NAME pipeline_mpi_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none -np ${np}
                     $<TARGET_FILE:test_pipeline_mpi>)
    set_tests_properties(pipeline_mpi_np${np} PROPERTIES LABELS "pipeline;mpi" TIMEOUT 180 RUN_SERIAL TRUE
                         ENVIRONMENT "OMPI_MCA_btl_vader_single_copy_mechanism=none")
  endforeach()
endif()
if(DTRAIN_MPI AND EXISTS "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  foreach(case loss_curve checkpoint stop trace bad_input)
    add_test(NAME mpi_pipeline_${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/mpi_pipeline_cli_test.py
                     $<TARGET_FILE:dtrain_cli> ${case})
    set_tests_properties(mpi_pipeline_${case} PROPERTIES LABELS "pipeline;mpi" TIMEOUT 300)
  endforeach()
endif()
