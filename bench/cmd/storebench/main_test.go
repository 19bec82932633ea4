package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestInts(t *testing.T) {
	tests := []struct {
		flag, in string
		want     []int
		err      string
	}{
		{"-writers", "1,16,64", []int{1, 16, 64}, ""},
		{"-writers", " 4 , 4 ", []int{4, 4}, ""},
		{"-list-sizes", "", nil, ""},
		{"-list-sizes", "10000,100000", []int{10000, 100000}, ""},
		{"-list-sizes", "100000,10000", nil, "must ascend"},
		{"-writers", "1,x", nil, "not a positive integer"},
		{"-writers", "0", nil, "not a positive integer"},
	}
	for _, tc := range tests {
		got, err := ints(tc.flag, tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ints(%s, %q) error = %v, want %q", tc.flag, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ints(%s, %q) = %v, %v; want %v", tc.flag, tc.in, got, err, tc.want)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-duration", "0s"},
		{"-watch-rate", "-1"},
		{"-list-sizes", "5,2"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		if err := run(args, &out, &errOut); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}

// -build-kine only prints the cached kine binary's path (building it when
// it is missing, which this test avoids with a fake one in place).
func TestBuildKinePrintsTheCachedBinary(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "kine")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"-build-kine", "-kine-cache", dir}, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != fake {
		t.Errorf("printed %q, want %q", got, fake)
	}
}
