# dtrain on a real single-node Slurm (tests/slurm/slurm_test.py starts and stops it): srun and
# sbatch + mpirun launches, preemption, requeue, warning signals and gang time slicing, each
# ending bit-identical to plain mpirun. Labelled mpi too, so the sanitizer run leaves it to the
# plain suite. Mostly waiting on Slurm (rank 0 sleeps through its steps): started first, it runs
# beside the rest of the suite. Skipped where Slurm is not installed.
add_test(NAME slurm COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/slurm_test.py $<TARGET_FILE:dtrain_cli>
                            ${PROJECT_SOURCE_DIR})
set_tests_properties(slurm PROPERTIES LABELS "slurm;mpi" TIMEOUT 900 SKIP_RETURN_CODE 77 COST 10000 RESOURCE_LOCK slurm)
