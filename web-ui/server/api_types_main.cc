// taas-ui-api-types: writes the front end's TypeScript types for the UI's API from the server's
// definitions (api_types.h), or checks that a file holds exactly them.
//
//   taas-ui-api-types                  print them
//   taas-ui-api-types --write FILE     write FILE
//   taas-ui-api-types --check FILE     exit 1, saying how to regenerate, when FILE differs
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "taas/ui_server/api_types.h"

int main(int argc, char** argv) {
  const std::string types = taas::ui_server::ApiTypeScript();
  const std::string mode = argc == 3 ? argv[1] : "";
  if (argc == 1) {
    std::cout << types;
    return 0;
  }
  if (mode == "--write") {
    std::ofstream out(argv[2], std::ios::binary);
    out << types;
    if (out.flush()) return 0;
    std::cerr << "taas-ui-api-types: cannot write " << argv[2] << "\n";
    return 1;
  }
  if (mode == "--check") {
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream committed;
    committed << in.rdbuf();
    if (in && committed.str() == types) return 0;
    std::cerr << "taas-ui-api-types: " << argv[2]
              << " differs from the UI server's rows and form (web-ui/server); regenerate it with "
                 "`cmake --build build --target web-ui-api-types` and commit it\n";
    return 1;
  }
  std::cerr << "usage: taas-ui-api-types [--write FILE | --check FILE]\n";
  return 2;
}
