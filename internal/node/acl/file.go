package acl

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// FilePath is where the aclfile file is: a relative name is in dir,
// where Redis, having changed into dir, finds it.
func FilePath(file, dir string) string {
	if file == "" || filepath.IsAbs(file) {
		return file
	}
	return filepath.Join(dir, file)
}

// SaveFile is ACL SAVE's write: lines (FileText) to a temporary file
// renamed over path. On an error it returns the step that failed, as
// Redis logs it, and removes the temporary file.
func SaveFile(path string, lines []string) (step string, err error) {
	tmp := fmt.Sprintf("%s.tmp-%d-%d", path, os.Getpid(), time.Now().UnixMilli())
	if err := os.WriteFile(tmp, FileText(lines), 0o644); err != nil {
		os.Remove(tmp)
		return "Opening temp ACL file for ACL SAVE", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "Renaming ACL file for ACL SAVE", err
	}
	return "", nil
}
