// The tpuemu executable: everything lives in the library (tools/cli.cpp).
#include "tools/cli.hpp"

int main(int argc, char** argv) { return tpuemu::cli::run(argc, argv); }
