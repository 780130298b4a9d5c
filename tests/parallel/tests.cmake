# Data-parallel runs of the dtrain command under mpirun (need Open MPI and Fashion-MNIST).
if(DTRAIN_MPI AND EXISTS "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(script ${CMAKE_CURRENT_SOURCE_DIR}/parallel/mpi_cli_test.py)
  foreach(alg ring tree butterfly onetoall mpi shm)
    add_test(NAME mpi_loss_curve_${alg} COMMAND ${Python3_EXECUTABLE} ${script} $<TARGET_FILE:dtrain_cli> loss_curve ${alg})
  endforeach()
  foreach(case disagree too_many_ranks killed_rank stale_momentum sync_bn)
    add_test(NAME mpi_${case} COMMAND ${Python3_EXECUTABLE} ${script} $<TARGET_FILE:dtrain_cli> ${case})
  endforeach()
  set_property(TEST mpi_loss_curve_ring mpi_loss_curve_tree mpi_loss_curve_butterfly mpi_loss_curve_onetoall
               mpi_loss_curve_mpi mpi_loss_curve_shm mpi_disagree mpi_too_many_ranks mpi_killed_rank mpi_stale_momentum
               mpi_sync_bn
               PROPERTY LABELS mpi)
  set_property(TEST mpi_killed_rank PROPERTY TIMEOUT 300)
endif()

# The same across two emulated hosts (network namespaces joined by a veth pair, tools/netns_hosts.sh);
# skipped (exit 77) where namespaces cannot be created, e.g. without root.
if(DTRAIN_MPI AND EXISTS "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
  foreach(alg ring mpi shm)
    add_test(NAME netns_loss_curve_${alg}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/parallel/netns_test.py
                     $<TARGET_FILE:dtrain_cli> ${PROJECT_SOURCE_DIR}/tools/netns_hosts.sh ${alg})
    set_tests_properties(netns_loss_curve_${alg} PROPERTIES LABELS "mpi;netns" SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
endif()
