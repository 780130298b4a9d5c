# The data tests write gzip files of their own with zlib.
if(TARGET test_data)
  target_link_libraries(test_data PRIVATE ZLIB::ZLIB)
endif()
