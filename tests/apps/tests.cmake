# The apps tests run the dtrain binary and the README example.
if(TARGET test_apps)
  add_dependencies(test_apps dtrain_cli example_train_mlp)
  target_compile_definitions(test_apps PRIVATE DTRAIN_BINARY="$<TARGET_FILE:dtrain_cli>"
                                               DTRAIN_EXAMPLE="$<TARGET_FILE:example_train_mlp>")
endif()
