# Exporters as plugins, as Fluent Bit's plugin folders register themselves:
# each exporters/<name>/CMakeLists.txt calls
#
#   iosonar_add_exporter(NAME lustre DESCRIPTOR kLustreExporter
#                        SOURCES parse.cc lustre.cc [LIBRARIES lib...] [LEAN])
#
# which builds the folder's sources into the static library
# iosonar_exporter_<NAME> (linked with the exporter framework and LIBRARIES)
# and records the exporter. DESCRIPTOR names its
# `const iosonar::exporters::Descriptor` (exporters/framework/exporter.h).
# LEAN: the exporter needs nothing beyond iosonar_base (no MySQL, SQLite,
# hiredis, boost), so it is also in the lean `iosonar-exporter`.
#
# Once every folder is added, iosonar_exporter_registry() generates a
# binary's table of exporters (AllExporters(), from registry.cc.in) into the
# build tree at configure time, in registration order: nothing to edit by
# hand when an exporter is added or removed.

define_property(GLOBAL PROPERTY IOSONAR_EXPORTERS BRIEF_DOCS "registered exporters, in order" FULL_DOCS "iosonar_add_exporter")

function(iosonar_add_exporter)
  cmake_parse_arguments(PARSE_ARGV 0 X "LEAN" "NAME;DESCRIPTOR" "SOURCES;LIBRARIES")
  if(X_UNPARSED_ARGUMENTS OR NOT X_NAME OR NOT X_DESCRIPTOR OR NOT X_SOURCES)
    message(FATAL_ERROR "iosonar_add_exporter(NAME n DESCRIPTOR kSymbol SOURCES ... [LIBRARIES ...] [LEAN]): "
                        "got '${ARGN}'")
  endif()
  if(NOT X_NAME MATCHES "^[a-z][a-z0-9-]*$" OR NOT X_DESCRIPTOR MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "iosonar_add_exporter: bad NAME '${X_NAME}' or DESCRIPTOR '${X_DESCRIPTOR}'")
  endif()
  get_property(known GLOBAL PROPERTY IOSONAR_EXPORTERS)
  if(X_NAME IN_LIST known)
    message(FATAL_ERROR "iosonar_add_exporter: exporter '${X_NAME}' registered twice")
  endif()
  set(lib iosonar_exporter_${X_NAME})
  add_library(${lib} STATIC ${X_SOURCES})
  target_compile_options(${lib} PRIVATE ${IOSONAR_WARNINGS})
  target_link_libraries(${lib} PUBLIC iosonar_exporter_framework ${X_LIBRARIES})
  file(RELATIVE_PATH dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set_property(GLOBAL APPEND PROPERTY IOSONAR_EXPORTERS ${X_NAME})
  set_property(GLOBAL PROPERTY IOSONAR_EXPORTER_${X_NAME}_DESCRIPTOR ${X_DESCRIPTOR})
  set_property(GLOBAL PROPERTY IOSONAR_EXPORTER_${X_NAME}_LEAN ${X_LEAN})
  set_property(GLOBAL PROPERTY IOSONAR_EXPORTER_${X_NAME}_DIR ${dir})
endfunction()

# iosonar_exporter_registry(TARGET t BINARY name [LEAN]): the static library
# t holding the generated AllExporters() of binary `name` (every registered
# exporter, or with LEAN only the lean ones) and linking their libraries.
function(iosonar_exporter_registry)
  cmake_parse_arguments(PARSE_ARGV 0 X "LEAN" "TARGET;BINARY" "")
  get_property(names GLOBAL PROPERTY IOSONAR_EXPORTERS)
  set(IOSONAR_REGISTRY_BINARY ${X_BINARY})
  set(IOSONAR_REGISTRY_DECLS "")
  set(IOSONAR_REGISTRY_ENTRIES "")
  set(libs "")
  foreach(n IN LISTS names)
    get_property(descriptor GLOBAL PROPERTY IOSONAR_EXPORTER_${n}_DESCRIPTOR)
    get_property(lean GLOBAL PROPERTY IOSONAR_EXPORTER_${n}_LEAN)
    get_property(dir GLOBAL PROPERTY IOSONAR_EXPORTER_${n}_DIR)
    if(X_LEAN AND NOT lean)
      continue()
    endif()
    string(APPEND IOSONAR_REGISTRY_DECLS "extern const Descriptor ${descriptor};  // ${n}: ${dir}/\n")
    string(APPEND IOSONAR_REGISTRY_ENTRIES "      &${descriptor},\n")
    list(APPEND libs iosonar_exporter_${n})
  endforeach()
  if(NOT libs)
    message(FATAL_ERROR "iosonar_exporter_registry(${X_BINARY}): no exporter registered")
  endif()
  set(out ${PROJECT_BINARY_DIR}/generated/exporters-${X_BINARY}.cc)
  configure_file(${PROJECT_SOURCE_DIR}/exporters/framework/registry.cc.in ${out} @ONLY)
  add_library(${X_TARGET} STATIC ${out})
  target_compile_options(${X_TARGET} PRIVATE ${IOSONAR_WARNINGS})
  target_link_libraries(${X_TARGET} PUBLIC ${libs})
endfunction()
