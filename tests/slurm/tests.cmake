# dtrain under a real single-node Slurm (tests/slurm/slurm_test.py starts and stops it): srun and
# sbatch + mpirun launches, preemption, requeue, warning signals and gang time slicing, each
# ending bit-identical to plain mpirun. Labelled mpi too, so the sanitizer run leaves it to the
# plain suite; skipped (status 77) where Slurm is not installed.
#
# It mostly waits on Slurm (rank 0 sleeps through its steps), so slurm_start launches it in the
# background (tests/slurm/background.py) first of all, and slurm waits for its result. slurm's
# cost (0.001) is above the discovered tests' 0, so ctest starts it right after slurm_start and
# it holds one of CI's two slots while the Slurm jobs, which use the CPUs too, run: the suite took
# 502 s so, 591 s with a negative cost (slurm last, the suite at -j2 beside the Slurm jobs).
set(DTRAIN_SLURM_RESULT ${CMAKE_CURRENT_BINARY_DIR}/slurm_result)
add_test(NAME slurm_start
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/background.py start ${DTRAIN_SLURM_RESULT} --
                 ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/slurm_test.py $<TARGET_FILE:dtrain_cli>
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(slurm_start PROPERTIES LABELS "slurm;mpi" TIMEOUT 30 COST 100000)
add_test(NAME slurm COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/background.py wait ${DTRAIN_SLURM_RESULT} 900)
set_tests_properties(slurm PROPERTIES LABELS "slurm;mpi" TIMEOUT 960 SKIP_RETURN_CODE 77 COST 0.001 DEPENDS slurm_start)
