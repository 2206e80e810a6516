package core_test

import (
	"fmt"

	"github.com/reso-project/reso/core"
)

// exampleFile is the value of one file resource, as a handler would build it.
var exampleFile = core.Node{Name: "file", Content: core.Record{
	{Name: "name", Value: "myfile.txt"},
	{Name: "size", Value: 1024},
	{Name: "acl", Value: core.List{
		core.Node{Name: "allow", Content: "ann"},
		core.Node{Name: "allow", Content: "admin"},
	}},
}}

func ExampleAppendJSON() {
	fmt.Println(string(core.AppendJSON(nil, exampleFile)))
	fmt.Println(string(core.AppendJSON(nil, core.List{"café", 1.0, 1e-05, nil})))
	// Output:
	// {"file": {"name": "myfile.txt", "size": 1024, "acl": [{"allow": "ann"}, {"allow": "admin"}]}}
	// ["caf\u00e9", 1.0, 1e-05, null]
}

func ExampleAppendXML() {
	fmt.Println(string(core.AppendXML(nil, exampleFile)))
	fmt.Println(string(core.AppendXML(nil, core.Record{{Name: "empty"}, {Name: "2nd name", Value: "a < b"}})))
	// Output:
	// <file><name>myfile.txt</name><size>1024</size><acl><allow>ann</allow><allow>admin</allow></acl></file>
	// <empty /><_2nd_name>a &lt; b</_2nd_name>
}

func ExampleAppendText() {
	fmt.Print(string(core.AppendText(nil, exampleFile)))
	// Output:
	// file:
	//   name: myfile.txt
	//   size: 1024
	//   acl:
	//     - allow: ann
	//     - allow: admin
}

func ExampleRender() {
	// Maps render as records in key order, structs as records in field order.
	v := map[string]any{
		"path": "some/where",
		"entry": struct {
			Name  string `json:"name"`
			IsDir bool   `json:"dir"`
		}{"docs", true},
	}
	for _, typ := range []string{"", "text/xml", "text/plain"} {
		contentType, body := core.Render(typ, v)
		fmt.Printf("%s\n%s\n", contentType, body)
	}
	// Output:
	// application/json
	// {"entry": {"name": "docs", "dir": true}, "path": "some/where"}
	// text/xml
	// <entry><name>docs</name><dir>true</dir></entry><path>some/where</path>
	// text/plain
	// entry:
	//   name: docs
	//   dir: true
	// path: some/where
}
