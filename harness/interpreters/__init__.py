"""The free-threaded interpreters: build and check (interpreters, pycheck), the docker images (images, dockerpython)."""
