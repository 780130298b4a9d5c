# Parameter-server runs across processes (included by tests/CMakeLists.txt): the constant-push
# check of every mode under mpirun with 3 and 4 ranks (1 or 2 servers with 2 workers; 1 to 3
# servers with 3, 2 or 1 workers), the ranks outnumbering the cores.
if(DTRAIN_MPI)
  add_executable(test_ps_mpi ${CMAKE_CURRENT_SOURCE_DIR}/comm/mpi/mpi_main.cpp
                             ${CMAKE_CURRENT_LIST_DIR}/mpi/ps_mpi_test.cpp)
  target_link_libraries(test_ps_mpi PRIVATE dtrain GTest::gtest)
  target_include_directories(test_ps_mpi PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  foreach(np 3 4)
    add_test(NAME ps_mpi_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none -np ${np}
                     $<TARGET_FILE:test_ps_mpi>)
    set_tests_properties(ps_mpi_np${np} PROPERTIES
                         LABELS "ps;mpi" TIMEOUT 180 RUN_SERIAL TRUE
                         ENVIRONMENT "OMPI_MCA_btl_vader_single_copy_mechanism=none")
  endforeach()
endif()

# dtrain train --mode ps end to end: BSP against allreduce, SSP's bound, ASP, the flags' errors.
if(DTRAIN_MPI AND EXISTS "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME ps_cli COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/ps_cli_test.py $<TARGET_FILE:dtrain_cli>)
  set_tests_properties(ps_cli PROPERTIES LABELS "ps;mpi" TIMEOUT 300 RUN_SERIAL TRUE)
endif()

# Faults under mpirun: a stopped server or worker named within --timeout, a killed server ends the
# job, an uneven data size finishes under BSP.
if(DTRAIN_MPI AND EXISTS "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
  add_test(NAME ps_faults COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/ps_fault_test.py
                                  $<TARGET_FILE:dtrain_cli>)
  set_tests_properties(ps_faults PROPERTIES LABELS "ps;mpi" TIMEOUT 300 RUN_SERIAL TRUE)
endif()

# Checkpoints of parameter-server runs: BSP resumed bitwise equal to a straight run, ASP resumed;
# a BSP run stopped by SIGTERM to every rank resumes bitwise equal too (ps_stop).
if(DTRAIN_MPI AND EXISTS "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
  add_test(NAME ps_checkpoint COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/ps_checkpoint_test.py
                                      $<TARGET_FILE:dtrain_cli> resume)
  add_test(NAME ps_stop COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/ps_checkpoint_test.py
                                $<TARGET_FILE:dtrain_cli> stop)
  set_tests_properties(ps_checkpoint ps_stop PROPERTIES LABELS "ps;mpi" TIMEOUT 300 RUN_SERIAL TRUE)
endif()
