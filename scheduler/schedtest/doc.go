// Package schedtest has small builders of pods and nodes for scheduler tests,
// so a table row reads as a sentence: MakePod().Name("p").Req("cpu", "1").Obj().
package schedtest
