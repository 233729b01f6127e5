# Provides SystemC::systemc.
# Debian's libsystemc-dev ships no CMake package, only pkg-config files. The
# library was built as C++17 (API symbol sc_api_version_2_3_4_cxx201703L), so
# C++20 code must pin SC_CPLUSPLUS=201703L or the link fails.
set(SYSTEMC_CPLUSPLUS "201703L" CACHE STRING "__cplusplus value libsystemc was built with")

find_package(PkgConfig REQUIRED)
pkg_check_modules(SYSTEMC REQUIRED IMPORTED_TARGET GLOBAL systemc>=2.3.3)
add_library(SystemC::systemc ALIAS PkgConfig::SYSTEMC)
find_package(Threads REQUIRED)
target_compile_definitions(PkgConfig::SYSTEMC INTERFACE SC_CPLUSPLUS=${SYSTEMC_CPLUSPLUS})
target_link_libraries(PkgConfig::SYSTEMC INTERFACE Threads::Threads)

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_LIBRARIES PkgConfig::SYSTEMC)   # try_compile cannot see ALIAS targets
check_cxx_source_compiles("
#include <systemc>
int sc_main(int, char*[]) { return 0; }
" SYSTEMC_API_LINKS)
unset(CMAKE_REQUIRED_LIBRARIES)
if(NOT SYSTEMC_API_LINKS)
  message(FATAL_ERROR "Cannot link SystemC with SC_CPLUSPLUS=${SYSTEMC_CPLUSPLUS}; "
    "check `nm -DC libsystemc.so | grep sc_api_version` and set SYSTEMC_CPLUSPLUS")
endif()
