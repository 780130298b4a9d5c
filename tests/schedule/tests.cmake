# The scheduling tests price jobs with the built-in profiles of the source tree and run
# `dtrain schedule` end to end.
if(TARGET test_schedule)
  add_dependencies(test_schedule dtrain_cli)
  target_compile_definitions(test_schedule PRIVATE DTRAIN_BINARY="$<TARGET_FILE:dtrain_cli>"
                                                   DTRAIN_PROFILES_DIR="${PROJECT_SOURCE_DIR}/profiles"
                                                   DTRAIN_SCHEDULE_DATA="${CMAKE_CURRENT_SOURCE_DIR}/schedule/data")
endif()
