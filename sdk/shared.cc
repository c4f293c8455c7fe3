// libtaas.so has no code of its own: it is the SDK's static archives, whole (sdk/CMakeLists.txt).
