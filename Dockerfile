# hookbin as a container: a small runtime image, a non-root user, the database on a volume.
#
#   docker build -t hookbin .
#   docker run -d --name hookbin -p 127.0.0.1:8080:8080 -v hookbin-data:/data \
#     --stop-timeout 40 hookbin
#
# Configure with HOOKBIN_* environment variables (`-e HOOKBIN_TRUST_PROXY=true` behind nginx);
# `hookbin healthcheck` reads the same HOOKBIN_LISTEN as the server. The image is built with the
# `dist` profile (fat LTO, one codegen unit; see Cargo.toml). There is no Docker engine on CI:
# .ci/docker-steps runs the build stage's commands (which must equal the README's build command)
# and tests/it/docker.rs runs the runtime stage's setup (user, /data, env, health check, stop
# signal) against the binary they produce.

FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --profile dist --locked

FROM debian:bookworm-slim
# A fixed numeric uid/gid: volume ownership is predictable and `runAsNonRoot` can verify it.
RUN groupadd --system --gid 10001 hookbin \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin hookbin \
 && mkdir -p /data \
 && chown 10001:10001 /data
COPY --from=build /src/target/dist/hookbin /usr/local/bin/hookbin
USER 10001:10001
VOLUME /data
ENV HOOKBIN_DB=/data/hookbin.db \
    HOOKBIN_LISTEN=0.0.0.0:8080
EXPOSE 8080
# hookbin stops on SIGTERM: it stops accepting, finishes in-flight captures and commits (up to
# 30 s for slow requests), so give `docker stop` more than its default 10 s (--stop-timeout 40).
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["hookbin", "healthcheck"]
ENTRYPOINT ["hookbin"]
CMD ["serve"]
