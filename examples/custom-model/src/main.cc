// custom-model: one binary for every replica of the job (job.yaml); TF_CONFIG says which.
#include "model.h"

int main(int argc, char** argv) { return taas::RunMain<custom_model::Model>(argc, argv); }
