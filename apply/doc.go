// Package apply writes desired objects to the API server and nothing else: it has no opinion
// about what should exist (that is render's) and knows nothing about training jobs.
//
//   - Apply pushes an object with server-side apply under one field manager, forcing ownership of
//     the fields it sets, and skips the request when the live object already carries the same
//     intent (a hash of the desired object, kept in an annotation).
//   - CreateAll creates objects that must be created once (pods) with POST, in slow-start batches
//     of bounded parallelism; AlreadyExists counts as done, so a retry after a failure part-way
//     never duplicates anything.
//   - Delete removes an object with a UID precondition, so a stale decision never deletes a
//     newer object of the same name.
//   - Expectations remember creations and deletions the cache has not shown yet, so a stale
//     cache neither duplicates an object nor brings back one that was just deleted.
package apply
