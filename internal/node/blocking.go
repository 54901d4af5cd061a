package node

// signalKeyAsReady records that key (in the client's database) received
// elements, so clients blocked on it are served after the command releases
// its locks (see handleReadyKeys).
func (c *Client) signalKeyAsReady(key string) {
	c.readyKeys = append(c.readyKeys, watchKey{c.db, key})
}

// handleReadyKeys serves clients blocked on the keys the last command
// made ready. Placeholder until blocking commands land: it only forgets
// the keys.
func (s *Server) handleReadyKeys(c *Client) {
	c.readyKeys = c.readyKeys[:0]
}
