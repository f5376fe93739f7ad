//go:build !linux && !darwin

package sockets

import "errors"

func peerUID(int) (uint32, error) { return 0, errors.ErrUnsupported }
