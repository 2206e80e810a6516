package channel_test

import (
	"context"
	"fmt"

	"github.com/reso-project/reso/channel"
)

// A door attaches a client, passes it the client's messages and writes
// what Next returns: here one client subscribes to a room, another joins
// it with a transient resource, and leaving deletes it.
func Example() {
	ctx := context.Background()
	// Epoch fixed for the output; without it the tree draws one.
	tree, err := channel.New(ctx, nil, channel.Options{Epoch: "e1"})
	if err != nil {
		panic(err)
	}
	defer tree.Close()
	alice, _ := tree.Connect("c1", "alice")
	bob, _ := tree.Connect("c2", "")
	alice.Exec(ctx, []byte(`{"method":"SUBSCRIBE","resource":"/room","msg_id":1}`))
	bob.Exec(ctx, []byte(`{"method":"PUT","resource":"/room/bob","entity":{"name":"Bob","_token":"x"}}`))
	bob.Disconnect()
	frames, _ := alice.Next(ctx, nil)
	for _, f := range frames {
		fmt.Println(string(f.Data))
	}
	// Output:
	// {"msg_id":1,"code":"success","epoch":"e1"}
	// {"notify":"UPDATE","resource":"/room","update":"bob","type":"application/json","entity":{"name":"Bob"},"seq":1}
	// {"notify":"UPDATE","resource":"/room","delete":"bob","type":null,"entity":null,"seq":2}
}
