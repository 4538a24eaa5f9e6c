# Install rules of what is not a target, and CPack: a .deb and an .rpm per
# role (docs/deployment.md):
#   iosonar-node    compute and Lustre nodes: the tracer, the MPI-IO layer,
#                   iosonar-exporter (agent, lustre, health, probe), their
#                   units, the SPANK plugin. No MariaDB/SQLite/HTTP server.
#   iosonar-server  the analysis host: iosonar (collect, analyze, serve, ...),
#                   their units, dashboards, schema, templates, pipelines.
#   cmake --build build --target package     (or: cd build && cpack -G DEB)
include(GNUInstallDirs)
# The packages install under /usr and the units name /usr/bin and /etc
# (`cmake --install build --prefix /usr` matches them; another prefix needs
# the units' ExecStart= edited).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

# ---- systemd units (deploy/systemd/*.service.in) -----------------------------------
set(IOSONAR_BINDIR ${CPACK_PACKAGING_INSTALL_PREFIX}/bin)
set(IOSONAR_SYSCONFDIR /etc)
set(IOSONAR_UNITDIR lib/systemd/system)  # under the prefix: /usr/lib/systemd/system
foreach(unit iosonar-agent.service iosonar-exporter@.service iosonar-probe.service)
  configure_file(deploy/systemd/${unit}.in ${PROJECT_BINARY_DIR}/deploy/systemd/${unit} @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/deploy/systemd/${unit} DESTINATION ${IOSONAR_UNITDIR} COMPONENT node)
endforeach()
foreach(unit iosonar-collector.service iosonar-analyze.service iosonar-serve.service)
  configure_file(deploy/systemd/${unit}.in ${PROJECT_BINARY_DIR}/deploy/systemd/${unit} @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/deploy/systemd/${unit} DESTINATION ${IOSONAR_UNITDIR} COMPONENT server)
endforeach()
# The unprivileged user of the probe, collector, worker and serve
# (systemd-sysusers; the packages' postinst runs it).
install(FILES deploy/sysusers/iosonar.conf DESTINATION lib/sysusers.d RENAME iosonar-node.conf COMPONENT node)
install(FILES deploy/sysusers/iosonar.conf DESTINATION lib/sysusers.d RENAME iosonar-server.conf COMPONENT server)
# The configuration file (a conffile; every daemon reads it): in the node
# package, which the server package depends on.
install(FILES deploy/iosonar.toml DESTINATION /etc/iosonar COMPONENT node)
# What the analysis host's other parts load.
foreach(dir dashboards es-templates logstash-pipelines mysql-schema)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_DATADIR}/iosonar COMPONENT server
          PATTERN "*.py" EXCLUDE)
endforeach()

# ---- CPack ------------------------------------------------------------------------------
set(CPACK_PACKAGE_NAME iosonar)
set(CPACK_PACKAGE_VENDOR "iosonar")
set(CPACK_PACKAGE_CONTACT "iosonar maintainers <iosonar@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "End-to-end I/O monitoring for HPC clusters")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR "DEB;RPM")
set(CPACK_STRIP_FILES ON)  # the build's debug information stays out of the packages
set(CPACK_COMPONENTS_ALL node server)
set(CPACK_COMPONENT_NODE_DESCRIPTION
    "iosonar compute and Lustre node parts: the LD_PRELOAD tracer, the node agent and the lean exporters")
set(CPACK_COMPONENT_SERVER_DESCRIPTION
    "iosonar analysis host: collector, analyses, worker, web pages, dashboards and schema")
set(CPACK_COMPONENT_SERVER_DEPENDS node)  # `iosonar run`/`trace` preload the node package's tracer

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the binaries' own libraries
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_NODE_PACKAGE_NAME iosonar-node)
set(CPACK_DEBIAN_SERVER_PACKAGE_NAME iosonar-server)
# Loaded at run time (dlopen), so not in the shlibs Depends: MUNGE
# (?auth=munge), OpenSSL (lumberjacks://, TLS), libcurl (https:// outputs),
# libmicrohttpd (serve).
set(CPACK_DEBIAN_NODE_PACKAGE_RECOMMENDS "libmunge2, libssl3")
set(CPACK_DEBIAN_SERVER_PACKAGE_RECOMMENDS "libmunge2, libssl3, libcurl4, libmicrohttpd12")
set(CPACK_DEBIAN_NODE_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles)  # /etc/iosonar/iosonar.toml
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/deploy/debian/postinst)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_RPM_COMPONENT_INSTALL ON)
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "unknown")
set(CPACK_RPM_NODE_PACKAGE_NAME iosonar-node)
set(CPACK_RPM_SERVER_PACKAGE_NAME iosonar-server)
set(CPACK_RPM_SERVER_PACKAGE_REQUIRES "iosonar-node = ${PROJECT_VERSION}")
set(CPACK_RPM_POST_INSTALL_SCRIPT_FILE ${PROJECT_SOURCE_DIR}/deploy/debian/postinst)
set(CPACK_RPM_EXCLUDE_FROM_AUTO_FILELIST_ADDITION
    /etc /etc/iosonar /usr/lib/systemd /usr/lib/systemd/system /usr/lib/sysusers.d /usr/share/iosonar)
set(CPACK_RPM_NODE_USER_FILELIST "%config(noreplace) /etc/iosonar/iosonar.toml")
include(CPack)
