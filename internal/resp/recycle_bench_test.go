package resp

func recycleReader(r *Reader) { r.Recycle() }
