# The calibration tests run `dtrain calibrate` and read the built-in profiles from the source tree.
if(TARGET test_calibration)
  add_dependencies(test_calibration dtrain_cli)
  target_compile_definitions(test_calibration PRIVATE DTRAIN_BINARY="$<TARGET_FILE:dtrain_cli>"
                                                      DTRAIN_PROFILES_DIR="${PROJECT_SOURCE_DIR}/profiles")
endif()

# dtrain calibrate under mpirun, and train --profile / --allreduce auto / explain on its profile;
# across two emulated hosts (tools/netns_hosts.sh) where namespaces can be made (else skipped).
if(DTRAIN_MPI AND EXISTS "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(script ${CMAKE_CURRENT_SOURCE_DIR}/calibration/calibrate_mpi_test.py)
  add_test(NAME calibrate_mpi_same_host COMMAND ${Python3_EXECUTABLE} ${script} $<TARGET_FILE:dtrain_cli> same_host)
  add_test(NAME calibrate_mpi_time_shared COMMAND ${Python3_EXECUTABLE} ${script} $<TARGET_FILE:dtrain_cli> time_shared)
  set_tests_properties(calibrate_mpi_time_shared PROPERTIES LABELS "mpi;calibration" TIMEOUT 300)
  add_test(NAME calibrate_netns_two_hosts COMMAND ${Python3_EXECUTABLE} ${script} $<TARGET_FILE:dtrain_cli> two_hosts
                                                  ${PROJECT_SOURCE_DIR}/tools/netns_hosts.sh)
  set_tests_properties(calibrate_mpi_same_host PROPERTIES LABELS "mpi;calibration" TIMEOUT 300)
  set_tests_properties(calibrate_netns_two_hosts PROPERTIES LABELS "mpi;netns;calibration" SKIP_RETURN_CODE 77
                                                            TIMEOUT 300)
endif()
