//go:build !linux

package imagegc

import "errors"

func statFS(string) (FSStats, error) {
	return FSStats{}, errors.New("imagegc: measuring the image file system needs Linux")
}
