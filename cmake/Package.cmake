# Install rules and the CMake package of tpuemu (included by the root
# CMakeLists.txt after every target exists).
include(CMakePackageConfigHelpers)

set_target_properties(libtpuemu PROPERTIES EXPORT_NAME tpuemu)
set_target_properties(tpuemu PROPERTIES EXPORT_NAME cli)  # tpuemu::cli, the command line

install(TARGETS tpuemu libtpuemu tpuemu_warnings tpuemu_common tpuemu_isa tpuemu_vpu tpuemu_memory tpuemu_ici
                tpuemu_ici_archive tpuemu_dist tpuemu_mxu tpuemu_mxu_rtl tpuemu_chip tpuemu_programs
                tpuemu_programs_archive tpuemu_api tpuemu_workloads tpuemu_workloads_archive tpuemu_cli_options
                tpuemu_tools
  EXPORT tpuemuTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT tpuemuTargets NAMESPACE tpuemu:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tpuemu)
foreach(dir common isa vpu memory ici dist mxu chip programs api workloads tools)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tpuemu/${dir}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.def")
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/chips/ DESTINATION ${CMAKE_INSTALL_DATADIR}/tpuemu/chips
        FILES_MATCHING PATTERN "*.json")

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tpuemuConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tpuemuConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tpuemu
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tpuemuConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tpuemuConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/tpuemuConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tpuemu)
