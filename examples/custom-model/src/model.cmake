# The model, written with taas's own layers (taas::nn): the SDK's static libraries. In an SDK built
# with CUDA, and where CUDA's libraries are found (-DTAAS_CUDA_ROOT=<site-packages>/nvidia, else
# the CUDA the SDK was built with), the CUDA engine too: its replicas then run on the GPUs their
# pod has, and on the CPU where it has none. Without them the model is built for the CPU.
find_package(taas 0.1 CONFIG REQUIRED OPTIONAL_COMPONENTS cuda)
add_library(custom-model-lib STATIC src/model.cc)
target_include_directories(custom-model-lib PUBLIC src)
target_link_libraries(custom-model-lib PUBLIC taas::runtime taas::nn taas::data)
if(taas_cuda_FOUND)
  target_link_libraries(custom-model-lib PUBLIC taas::nn_cuda)
endif()
