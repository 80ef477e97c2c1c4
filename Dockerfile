# The operator's image, for those with Docker (or podman/buildah): `docker build -t NAME .`
# `make image` writes the same shape with no container engine (hack/ociimage): FROM scratch, the
# static binary at /trainyard, user 65532:65532, ENTRYPOINT ["/trainyard"]; keep the two in step.

# The build runs on the builder's own platform and cross-compiles for the target's.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags='-s -w' -o /out/trainyard .

# No shell, no package manager, no libc: only the binary. Owned by root and run as 65532, so the
# process can run it but not change it. The user is numeric so that runAsNonRoot can check it.
FROM scratch
COPY --from=build /out/trainyard /trainyard
USER 65532:65532
ENTRYPOINT ["/trainyard"]
