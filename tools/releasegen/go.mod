module github.com/dra-migrate/dra-migrate/tools/releasegen

go 1.22
