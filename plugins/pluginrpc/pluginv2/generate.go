// Package pluginv2 is the generated gRPC code of reso's plugin protocol,
// version 2 (proto package reso.plugin.v2, see plugin.proto). Do not edit the
// *.pb.go files; regenerate them as plugins/pluginrpc/README.md describes.
package pluginv2

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
