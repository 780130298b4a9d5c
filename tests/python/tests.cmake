# The Python module (python/): its unittest suite, which compares it with the dtrain command, and
# the notebook-style example. Label "pymodule" ("python" marks the PyTorch test); both run with
# the interpreter the module was built for, importing it from the build tree.
if(TARGET dtrain_python)
  set(DTRAIN_PYTHON_TEST_ENV "PYTHONPATH=${CMAKE_BINARY_DIR}/python" "DTRAIN_BINARY=$<TARGET_FILE:dtrain_cli>")
  add_test(NAME python_module COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/dtrain_test.py -v)
  set_tests_properties(python_module PROPERTIES LABELS "pymodule" TIMEOUT 300 ENVIRONMENT "${DTRAIN_PYTHON_TEST_ENV}")
  add_test(NAME python_example_scaling
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/examples/python/scaling_prediction.py
                   ${CMAKE_CURRENT_BINARY_DIR}/scaling.png)
  set_tests_properties(python_example_scaling PROPERTIES LABELS "pymodule" TIMEOUT 120
                                                         ENVIRONMENT "${DTRAIN_PYTHON_TEST_ENV}")
endif()
