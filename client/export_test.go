package client

// FailedAttempts returns the attempts counted as failed since the last
// connection that proved itself: the exponent of the next back-off.
func FailedAttempts(c *Client) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempt
}
