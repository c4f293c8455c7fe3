# The model, written with taas's own layers (taas::nn): the SDK's static libraries.
find_package(taas 0.1 CONFIG REQUIRED)
add_library(custom-model-lib STATIC src/model.cc)
target_include_directories(custom-model-lib PUBLIC src)
target_link_libraries(custom-model-lib PUBLIC taas::runtime taas::nn taas::data)
