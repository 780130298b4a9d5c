# The perfmodel tests read the built-in profiles from the source tree and run `dtrain predict`.
if(TARGET test_perfmodel)
  add_dependencies(test_perfmodel dtrain_cli)
  target_compile_definitions(test_perfmodel PRIVATE DTRAIN_BINARY="$<TARGET_FILE:dtrain_cli>"
                                                    DTRAIN_PROFILES_DIR="${PROJECT_SOURCE_DIR}/profiles")
endif()
