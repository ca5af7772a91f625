# The image the Deployment in artifacts/server runs. Build with
#   docker build -t ghcr.io/clustergate/clustergate-apiserver:latest .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY pkg pkg
RUN CGO_ENABLED=0 go build -tags=fieldsv1string -trimpath -ldflags "-s -w" -o /clustergate-apiserver ./cmd/clustergate-apiserver

FROM gcr.io/distroless/static:nonroot
COPY --from=build /clustergate-apiserver /clustergate-apiserver
USER 65532:65532
ENTRYPOINT ["/clustergate-apiserver"]
