# iosonar on Debian 12: built with the project's own setup script, installed
# into a slim runtime image (used by docker-compose.yml's iosonar services).
FROM debian:12 AS build
WORKDIR /src
COPY . .
RUN bash scripts/setup.sh \
 && cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIOSONAR_BUILD_TESTS=OFF \
 && cmake --build /build -j"$(nproc)" --target iosonar iosonar-exporter iosonar-trace iosonar-demo-workload \
 && cmake --install /build --prefix /opt/iosonar

FROM debian:12-slim
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates libcurl4 libhiredis0.14 libsqlite3-0 libboost-program-options1.74.0 libmariadb3 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/iosonar /usr/local
COPY es-templates /usr/local/share/iosonar/es-templates
EXPOSE 5171
ENTRYPOINT []
CMD ["iosonar", "--help"]
