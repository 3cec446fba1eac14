"""`imgkit lock`: exact versions with hashes for what each image installs."""
