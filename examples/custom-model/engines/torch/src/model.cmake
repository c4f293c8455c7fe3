# The model, written with LibTorch (torch::nn) and bound to the runtime by taas::torch. The SDK's
# torch component finds LibTorch: -DTAAS_TORCH_ROOT=DIR (a folder holding torch/include and
# torch/lib, such as a site-packages with the torch wheel) or -DTorch_DIR=..., else the LibTorch
# the SDK was built with (README.md). In an SDK built with CUDA, taas::torch runs on GPUs too and
# brings the CUDA parts, with CUDA's libraries from -DTAAS_CUDA_ROOT=<site-packages>/nvidia, else
# the CUDA the SDK was built with.
find_package(taas 0.1 CONFIG REQUIRED COMPONENTS torch)
add_library(custom-model-lib STATIC src/model.cc)
target_include_directories(custom-model-lib PUBLIC src)
target_link_libraries(custom-model-lib PUBLIC taas::torch taas::runtime taas::data)
