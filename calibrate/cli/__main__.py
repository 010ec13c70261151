from calibrate.cli import main

main()
