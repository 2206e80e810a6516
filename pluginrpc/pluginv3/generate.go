// Package pluginv3 is the generated gRPC code of reso's plugin protocol,
// version 3 (proto package reso.plugin.v3, see plugin.proto). Do not edit the
// *.pb.go files; regenerate them as pluginrpc/README.md describes.
package pluginv3

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
