# The perfmodel tests read the built-in profiles from the source tree and run `dtrain predict`.
if(TARGET test_perfmodel)
  add_dependencies(test_perfmodel dtrain_cli)
  target_compile_definitions(test_perfmodel PRIVATE DTRAIN_BINARY="$<TARGET_FILE:dtrain_cli>"
                                                    DTRAIN_PROFILES_DIR="${PROJECT_SOURCE_DIR}/profiles")
endif()

# bench/validate_model.py's summaries (the table per layout and model, the rows over the target,
# the measurement's repeatability) on rows whose errors are known; nothing is run or measured.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME validate_model_summaries
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/perfmodel/validate_model_test.py)
set_tests_properties(validate_model_summaries PROPERTIES LABELS "perfmodel" TIMEOUT 60)
