# `cmake --install build [--prefix P]`: the tools (bin/), the libraries (lib/), the public
# headers (include/cke/, paths as in the source tree), the data an Engine reads (share/cke/:
# kernel_maps/ with contracts, circuits/ with chat_templates/), a CMake package and a
# pkg-config file (cke.pc). The package's cke::cke is the C API: libcke.so with CKE_SHARED,
# else the static libraries (which then give the C++ API too); the static libraries are
# installed either way as cke::cke_chat (Session), cke::cke_runtime (Engine), ... for C++.
# An installed tool finds share/cke beside its bin/, libcke.so beside its lib/; an
# application linking the static libraries finds it through CKE_INSTALL_DATA_DIR
# (resolver/data_dirs.cpp).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CKE_INSTALL_DATA "${CMAKE_INSTALL_DATADIR}/cke")
set(CKE_INSTALL_INCLUDE "${CMAKE_INSTALL_INCLUDEDIR}/cke")
set(CKE_INSTALL_CMAKE "${CMAKE_INSTALL_LIBDIR}/cmake/cke")
file(RELATIVE_PATH CKE_LIB_TO_DATA "${CMAKE_INSTALL_FULL_LIBDIR}" "${CMAKE_INSTALL_FULL_DATADIR}/cke")
set_property(SOURCE resolver/data_dirs.cpp DIRECTORY ${CMAKE_SOURCE_DIR}/resolver APPEND
  PROPERTY COMPILE_DEFINITIONS "CKE_INSTALL_DATA_DIR=\"${CMAKE_INSTALL_FULL_DATADIR}/cke\""
  "CKE_INSTALL_LIB_TO_DATA=\"${CKE_LIB_TO_DATA}\"")

# The static libraries, bottom to top, and the target exported as cke::cke. Their include
# directory is the source root while building and include/cke installed; their headers need
# C++20 of a consumer too.
set(CKE_INSTALL_LIBS cke_kernels cke_exec cke_resolver cke_jit cke_gguf cke_tokenizer
    cke_runtime cke_chat cke_capi)
if(CKE_SHARED)
  set(CKE_PACKAGE_LIB cke_shared)  # runtime/capi/CMakeLists.txt, exported as cke
else()
  add_library(cke INTERFACE)
  target_link_libraries(cke INTERFACE cke_capi cke_chat cke_runtime)
  set(CKE_PACKAGE_LIB cke)
endif()
add_library(cke::cke ALIAS ${CKE_PACKAGE_LIB})
foreach(lib ${CKE_INSTALL_LIBS} ${CKE_PACKAGE_LIB})
  set_target_properties(${lib} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
    "$<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}>;$<INSTALL_INTERFACE:${CKE_INSTALL_INCLUDE}>")
endforeach()
foreach(lib ${CKE_INSTALL_LIBS})
  target_compile_features(${lib} PUBLIC cxx_std_20)
endforeach()

install(TARGETS cke-run cke-server cke-bench cke-tokenize cke-gguf cke-audit
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${CKE_PACKAGE_LIB} ${CKE_INSTALL_LIBS} EXPORT cke-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT cke-targets NAMESPACE cke:: DESTINATION ${CKE_INSTALL_CMAKE})

# Public headers: the C API, the C++ API (Engine, Session, chat, tokenizer, sampler) and the
# headers those include.
install(FILES runtime/capi/cke.h DESTINATION ${CKE_INSTALL_INCLUDE}/runtime/capi)
install(FILES runtime/core/engine.h runtime/core/sampler.h
        DESTINATION ${CKE_INSTALL_INCLUDE}/runtime/core)
install(FILES runtime/tokenizer/tokenizer.h runtime/tokenizer/vocab.h
        DESTINATION ${CKE_INSTALL_INCLUDE}/runtime/tokenizer)
install(FILES runtime/chat/chat_template.h runtime/chat/chat_prompt.h
              runtime/chat/generate_session.h runtime/chat/session.h
              runtime/chat/stop_matcher.h runtime/chat/transcript.h
        DESTINATION ${CKE_INSTALL_INCLUDE}/runtime/chat)

install(DIRECTORY kernel_maps circuits DESTINATION ${CKE_INSTALL_DATA})

configure_package_config_file(cmake/cke-config.cmake.in
  ${CMAKE_BINARY_DIR}/cke-config.cmake INSTALL_DESTINATION ${CKE_INSTALL_CMAKE})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cke-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cke-config.cmake ${CMAKE_BINARY_DIR}/cke-config-version.cmake
        DESTINATION ${CKE_INSTALL_CMAKE})

# pkg-config: libcke.so alone, or every static library and dependency.
if(CKE_SHARED)
  set(CKE_PC_REQUIRES "")
  set(CKE_PC_LIBS "-lcke")
else()
  set(CKE_PC_REQUIRES "libcpuinfo libpcre2-8 fmt yaml-cpp tbb")
  set(CKE_PC_LIBS "")
  foreach(lib cke_capi cke_chat cke_runtime cke_resolver cke_jit cke_exec cke_tokenizer
              cke_gguf cke_kernels)
    string(APPEND CKE_PC_LIBS "-l${lib} ")
  endforeach()
  string(APPEND CKE_PC_LIBS "-lasmjit -lstdc++ -lm -ldl -pthread")
endif()
# Relocatable: the prefix is found from the .pc file's own place.
file(RELATIVE_PATH CKE_PC_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" CKE_PC_PREFIX "${CKE_PC_PREFIX}")
configure_file(cmake/cke.pc.in ${CMAKE_BINARY_DIR}/cke.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cke.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
